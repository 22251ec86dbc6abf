from services.common.runner import main
from services.records.server import start

main("records", start)
