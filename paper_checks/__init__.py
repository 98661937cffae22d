"""One runnable check per headline claim of the two papers (see README.md)."""
from critwin.paper_checks.base import (
    CHECK_SIZES,
    EmpiricalCheck,
    TheoryCheck,
    train_checks,
    verdict,
    write_result,
)
from critwin.paper_checks.claims import CHECKS, CLAIM_IDS

__all__ = ["CHECKS", "CLAIM_IDS", "CHECK_SIZES", "EmpiricalCheck", "TheoryCheck", "train_checks", "verdict", "write_result"]
