"""The tool-calling loop and its seam: one round after another until the run ends or waits.

``loop`` drives the rounds; ``seam`` is where a model's call meets a tool (the only place a
tool's content is bounded before it reaches a provider); ``turn`` and ``remote_calls`` run a
round's calls; ``window`` fits the conversation to the model; ``state`` is the loop's resumable
state; ``suspension`` and ``basis`` pause and re-check a run that waits; ``governance`` records
gate decisions; ``endings`` builds a loop's result; ``run`` holds a run's request, outcome and
operator decision.

May import: ``core``, ``providers``, ``workspace``, ``tools`` and ``policy``. Never ``runs``,
the store, the queue or anything that serves a run.
"""
