import sys

from engine_model.cli import main

sys.exit(main())
