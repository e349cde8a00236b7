"""The ASGI application ``manage.py demo`` serves: the project's, plus the static files.

daphne serves no static files and the demo runs with ``DEBUG`` off, so this wraps the
project's application in Django's ``ASGIStaticFilesHandler`` (what ``runserver`` does),
which finds the files in place: no ``collectstatic`` step before a demo.
"""

from __future__ import annotations

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

from missionweave.asgi import application as project_application

application = ASGIStaticFilesHandler(project_application)
