"""Scale-out on one machine (issue 15 §6): two ASGI servers, two Celery workers and a beat
against one PostgreSQL and one Redis, with ``kill -9`` of a server and of a worker mid-load."""
