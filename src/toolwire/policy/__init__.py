"""What a run may do, spend and show: its options, prices, trace, privacy levels and charter.

``options`` bounds a run (rounds, timeouts, output caps); ``pricing`` turns usage into cost;
``trace`` is the run's record of steps; ``privacy`` decides what of that record may leave the
run; ``charter`` fixes all of it for a run's whole life.

May import: ``core``, ``providers``, ``workspace`` and ``tools``. Never the loop or anything
above it.
"""
