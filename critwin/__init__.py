"""critwin: when does training decide what a Transformer learns?

Three modules: ``critwin.theory`` (rate equations and predicted windows, no torch),
``critwin.empirical`` (real training and the run store) and ``critwin.bridge``
(theory against runs, figures, the ``critwin`` command line).
"""

__version__ = "0.1.0"
