"""The course's translations: what a notebook's messages are and how an edition's notebook is made of them
(``notebook.py``), the catalogs kept in step with ``solutions/`` (``catalogs.py``), zh-CN made from zh-TW
(``simplified.py``), ``python -m autograder editions update`` (``update.py``), and posref's own messages and their
catalogs (``messages.py``). Nothing here runs nbgrader: the editions' notebooks are released by ``release``.

Imports of the autograder: ``course``.
"""
