"""``python -m tinytools`` runs the command line."""

from tinytools._cli import main

raise SystemExit(main())
