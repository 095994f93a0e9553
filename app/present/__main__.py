"""`python -m app.present figure …` (and every engine command): the same as `who-waits`."""

import sys

from app.present.cli import main

sys.exit(main())
