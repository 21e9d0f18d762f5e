"""``python -m rheo_cli`` runs the command line."""

from .entry import main

main()
