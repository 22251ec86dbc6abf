from services.common.runner import main
from services.lobby.server import start

main("lobby", start)
