from services.arbiter.server import start
from services.common.runner import main

main("arbiter", start)
