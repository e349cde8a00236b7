"""WSGI entry point (the API without websockets)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "missionweave.settings")
application = get_wsgi_application()
