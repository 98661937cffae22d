"""critwin: when does training decide what a Transformer learns?

``critwin.theory`` (rate equations and predicted windows, no torch; the folder theory/),
``critwin.empirical`` (real training and the run store; empirical/), ``critwin.bridge`` (theory against
runs and their scores; bridge/) and ``critwin.paper_checks`` (one check per claim; paper_checks/). The
``critwin`` command line is ``critwin.cli`` (critwin/cli/), above all of them.
"""

__version__ = "0.1.0"
