from services.common.runner import main
from services.table.server import start

main("table", start)
