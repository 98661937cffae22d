"""Real training of the Transformers with interventions, and the run store.

Imports torch; never imports ``critwin.theory``. Tasks, models, schedules and the
training loop arrive with the empirical-core issue.
"""
