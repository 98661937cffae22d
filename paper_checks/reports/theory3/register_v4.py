"""The command that registered the fourth version (v4/registration.json records it): register_version.py 4.

Run: python3 paper_checks/reports/theory3/register_v4.py FIRST_CELL [OUT]
"""
import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.argv = [sys.argv[0], "4", *sys.argv[1:]]
    runpy.run_path(str(Path(__file__).with_name("register_version.py")), run_name="__main__")
