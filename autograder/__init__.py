"""The autograder: nbgrader's workflow with a score of record that student code cannot fake (see README.md).

At the top: ``cli.py`` (the commands' options, one call per command), ``course.py`` (every path and setting the
rooms share), ``nbgrader_config.py`` (nbgrader's configuration, executed by path), ``benchmark.py`` and
``calibrate.py`` (the measuring tools, ``python -m autograder.benchmark`` / ``.calibrate``). The rooms, each a
folder whose ``__init__`` says what it owns and imports, the arrows going one way (tests/test_layers.py):

    intake, sandbox, editions         ->  course
    pages                             ->  course, editions
    release                           ->  course, editions, intake
    grading                           ->  course, intake, sandbox, editions
    analysis                          ->  course, editions, grading
    demo                              ->  course, intake, release, grading, pages
"""
