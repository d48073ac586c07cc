"""``python -m tinytools`` runs the command line."""

from tinytools.cli import main

raise SystemExit(main())
