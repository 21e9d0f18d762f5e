"""``python -m rheo_cli`` runs the command line."""

from .cli.main import main

main()
