"""`python -m critwin.cli ...` runs the command line."""
import sys

from critwin.cli.main import main

sys.exit(main())
