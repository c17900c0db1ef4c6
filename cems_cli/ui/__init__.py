"""`cems ui`: a local web viewer over the library (`cems_cli/api/`), for seeing and steering memories.

Starlette + uvicorn + Jinja2 (autoescape) + sse-starlette, htmx 2 and its SSE extension vendored in static/
(0BSD, LICENSE-htmx.txt): no CDN, no build step. An extra (`pip install 'cems[ui]'`): nothing here is
imported by a hook or by any other command.
"""
