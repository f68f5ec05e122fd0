"""Speed checks: a student's function timed against the reference, as a ratio, in the same run.

The machinery: ``check`` (``SpeedCheck``, one declaration per timed function), ``timing`` (chained rounds, the
median ratio, the verification of timed outputs), ``links`` (how a call's output becomes the next call's input),
``budgets`` (each function's budget per device, with the medians it rests on) and ``calibration`` (``python -m
posref.bench --suite budgets``). The declarations, one module per notebook's checkers: ``order`` (01's
attention), ``absolute`` (02), ``relative`` (03), ``rope`` (04), ``lab`` (06 and 08). Nothing here imports a
notebook's correctness checkers or the child process (the score of record's ``RemoteFunction`` is a
``timing.TimedElsewhere``)."""
