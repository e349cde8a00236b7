#!/usr/bin/env bash
# Make sure PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) answer; start them if not.
set -euo pipefail

WAIT_S="${MWP_SERVICES_WAIT_S:-30}"

postgres_up() { pg_isready -q -h 127.0.0.1 -p 5432 >/dev/null 2>&1; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }

wait_for() {
    local name="$1" check="$2" waited=0
    until "$check"; do
        if [ "$waited" -ge $((WAIT_S * 10)) ]; then
            echo "services: $name did not answer within ${WAIT_S}s" >&2
            return 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
}

for tool in pg_isready pg_ctlcluster redis-cli redis-server; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "services: '$tool' is not installed (PostgreSQL and Redis are needed for make test)" >&2
        exit 1
    fi
done

if ! postgres_up; then
    echo "services: starting PostgreSQL"
    # shellcheck disable=SC2046 # one cluster version directory
    pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start
fi
if ! redis_up; then
    echo "services: starting Redis"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi
wait_for PostgreSQL postgres_up
wait_for Redis redis_up
