"""The correctness checkers of each notebook, one module per notebook (two for 04): ``order`` (01),
``absolute`` (02), ``relative`` (03), ``rope`` and ``derivation`` (04), ``rope_analysis`` (05), ``lab`` (06 and 08),
``scaling`` (07). Each checker draws its cases (``posref.grading.cases``) and reports the first
difference (``posref.grading.report``); the public names are re-exported by ``posref.grading``. Nothing here imports
the speed machinery or the child process."""
