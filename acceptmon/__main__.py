import sys

from acceptmon.cli import main

sys.exit(main())
