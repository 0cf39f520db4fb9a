#!/bin/sh
# sparkrank container entrypoint: one image plays the Spark master, a worker, or a spark-submit client.
#
#   master                 Spark standalone master in the foreground (RPC on $SPARK_MASTER_HOST:7077, UI :8080)
#   worker                 Spark standalone worker in the foreground, registering with $SPARK_MASTER_URL
#   submit [OPTS] JOB ...  spark-submit against $SPARK_MASTER_URL (JOB e.g. jobs/train.py, relative to /opt/sparkrank)
#   secret                 write a new random secret to $SPARKRANK_SECRET_FILE unless it exists (mode 0600)
#   health master|worker   exit 0 when the local master (status ALIVE) / worker web UI answers (for healthchecks)
#   anything else          run it as a command (sh, sparkrank ..., python ...)
#
# With $SPARKRANK_SECRET_FILE set, master, worker and submit run with Spark's shared-secret
# authentication and AES encryption of its RPC traffic (spark.authenticate,
# spark.network.crypto.enabled): the secret goes into a spark-defaults.conf of mode 0600 in a
# private $SPARK_CONF_DIR, never onto a command line, where `ps` would show it.
set -eu

SPARK_MASTER_HOST=${SPARK_MASTER_HOST:-spark-master}
SPARK_MASTER_PORT=${SPARK_MASTER_PORT:-7077}
SPARK_MASTER_WEBUI_PORT=${SPARK_MASTER_WEBUI_PORT:-8080}
SPARK_MASTER_URL=${SPARK_MASTER_URL:-spark://${SPARK_MASTER_HOST}:${SPARK_MASTER_PORT}}
SPARK_WORKER_WEBUI_PORT=${SPARK_WORKER_WEBUI_PORT:-8081}

# This container's address on the compose network: what executors and the driver dial back.
# (A plain container hostname is not always resolvable by the other containers; the IP is.)
container_ip() {
    python3 -c 'import socket; print(socket.gethostbyname(socket.gethostname()))'
}

usage() {
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'
}

# Spark's authentication on, from the shared secret file, when $SPARKRANK_SECRET_FILE is set.
spark_auth_conf() {
    [ -n "${SPARKRANK_SECRET_FILE:-}" ] || return 0
    if [ ! -s "$SPARKRANK_SECRET_FILE" ]; then
        echo "SPARKRANK_SECRET_FILE ($SPARKRANK_SECRET_FILE) is missing or empty: run the 'secret' command first" >&2
        exit 1
    fi
    conf_dir=$(umask 077 && mktemp -d "${TMPDIR:-/tmp}/sparkrank-conf.XXXXXX")
    if [ -n "${SPARK_CONF_DIR:-}" ] && [ -f "$SPARK_CONF_DIR/spark-defaults.conf" ]; then
        cp "$SPARK_CONF_DIR/spark-defaults.conf" "$conf_dir/spark-defaults.conf"
    fi
    (
        umask 077
        printf 'spark.authenticate true\nspark.authenticate.secret %s\nspark.network.crypto.enabled true\n' \
            "$(cat "$SPARKRANK_SECRET_FILE")" >> "$conf_dir/spark-defaults.conf"
    )
    SPARK_CONF_DIR=$conf_dir
    export SPARK_CONF_DIR
}

require_spark_home() {
    if [ ! -x "${SPARK_HOME:-}/bin/spark-class" ]; then
        echo "SPARK_HOME (${SPARK_HOME:-unset}) has no bin/spark-class" >&2
        exit 1
    fi
}

case "${1:-help}" in
    master)
        shift
        # The RPC endpoint binds and advertises $SPARK_MASTER_HOST (the service name resolves to this
        # container's address); SPARK_LOCAL_IP stays unset so the web UI binds 0.0.0.0.
        require_spark_home
        spark_auth_conf
        exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
            --host "$SPARK_MASTER_HOST" --port "$SPARK_MASTER_PORT" --webui-port "$SPARK_MASTER_WEBUI_PORT" "$@"
        ;;
    worker)
        shift
        mkdir -p "${SPARK_WORKER_DIR:-/opt/spark-work}"
        require_spark_home
        spark_auth_conf
        exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
            --host "${SPARK_WORKER_HOST:-$(container_ip)}" \
            --cores "${SPARK_WORKER_CORES:-1}" --memory "${SPARK_WORKER_MEMORY:-1g}" \
            --webui-port "$SPARK_WORKER_WEBUI_PORT" --work-dir "${SPARK_WORKER_DIR:-/opt/spark-work}" \
            "$@" "$SPARK_MASTER_URL"
        ;;
    submit)
        shift
        if [ "$#" -eq 0 ]; then
            echo "usage: submit [spark-submit options] JOB [job options]   e.g. submit jobs/train.py --help" >&2
            exit 2
        fi
        # options given after "submit" come later on the command line and override these defaults
        require_spark_home
        spark_auth_conf
        exec "$SPARK_HOME/bin/spark-submit" \
            --master "$SPARK_MASTER_URL" \
            --conf "spark.driver.host=${SPARK_DRIVER_HOST:-$(container_ip)}" \
            --conf spark.driver.bindAddress=0.0.0.0 \
            --conf "spark.pyspark.python=${PYSPARK_PYTHON:-python3}" \
            --conf "spark.pyspark.driver.python=${PYSPARK_PYTHON:-python3}" \
            --conf "spark.executor.memory=${SPARK_EXECUTOR_MEMORY:-768m}" \
            --conf spark.ui.showConsoleProgress=false \
            "$@"
        ;;
    secret)
        : "${SPARKRANK_SECRET_FILE:?set SPARKRANK_SECRET_FILE to the file to write}"
        if [ -s "$SPARKRANK_SECRET_FILE" ]; then
            echo "secret: $SPARKRANK_SECRET_FILE exists; kept (remove it, or the volume, for a new one)"
            exit 0
        fi
        (
            umask 077
            python3 -c 'import secrets; print(secrets.token_hex(32))' > "$SPARKRANK_SECRET_FILE.tmp"
            mv "$SPARKRANK_SECRET_FILE.tmp" "$SPARKRANK_SECRET_FILE"
        )
        echo "secret: wrote a new secret to $SPARKRANK_SECRET_FILE"
        ;;
    health)
        case "${2:-master}" in
            master) url="http://localhost:${SPARK_MASTER_WEBUI_PORT}/json/"; want=ALIVE ;;
            worker) url="http://localhost:${SPARK_WORKER_WEBUI_PORT}/json/"; want= ;;
            *) echo "health: expected master or worker, got $2" >&2; exit 2 ;;
        esac
        exec python3 -c '
import json, sys, urllib.request
state = json.load(urllib.request.urlopen(sys.argv[1], timeout=3))
sys.exit(0 if not sys.argv[2] or state.get("status") == sys.argv[2] else 1)
' "$url" "$want"
        ;;
    help | -h | --help)
        usage
        ;;
    *)
        exec "$@"
        ;;
esac
