"""The ASGI application the live test server runs: the project's, plus its static files.

daphne serves no static files and tests run with ``DEBUG`` off; like pytest-django's
``live_server``, the live server finds them in place (Django's ``ASGIStaticFilesHandler``,
what ``runserver`` uses), so browser tests load the dashboard's CSS and JS modules.
Websocket and API traffic pass straight through to ``missionweave.asgi.application``.
"""

from __future__ import annotations

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

from missionweave.asgi import application as project_application

application = ASGIStaticFilesHandler(project_application)
