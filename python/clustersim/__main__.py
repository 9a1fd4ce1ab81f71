import sys

from clustersim.cli import main

sys.exit(main())
