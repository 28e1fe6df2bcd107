"""`helix web`: a local web view of branches, commits, diffs, files and memory.

Server-rendered pages (starlette, served by uvicorn) over the same core API as every
other surface: a `Repository` and a `Memory`. Nothing here re-implements vcs or memory
logic; a page reads through their public methods and a form posts to one of them.

    app.py      routes, the token check, CSRF, error pages
    history.py  the paged, every-branch commit walk and its SVG graph
    pages_*.py  one module per page family (vcs, memory, stats)
    server.py   uvicorn in the foreground (`helix web`) or in a thread (the daemon)
    running.py  the servers this process runs (the daemon stops them on unmount)
"""
