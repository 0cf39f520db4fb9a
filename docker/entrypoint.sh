#!/bin/sh
# sparkrank container entrypoint: one image plays the Spark master, a worker, or a spark-submit client.
#
#   master                 Spark standalone master in the foreground (RPC on $SPARK_MASTER_HOST:7077, UI :8080)
#   worker                 Spark standalone worker in the foreground, registering with $SPARK_MASTER_URL
#   submit [OPTS] JOB ...  spark-submit against $SPARK_MASTER_URL (JOB e.g. jobs/train.py, relative to /opt/sparkrank)
#   health master|worker   exit 0 when the local master (status ALIVE) / worker web UI answers (for healthchecks)
#   anything else          run it as a command (sh, sparkrank ..., python ...)
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
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
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
        exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
            --host "$SPARK_MASTER_HOST" --port "$SPARK_MASTER_PORT" --webui-port "$SPARK_MASTER_WEBUI_PORT" "$@"
        ;;
    worker)
        shift
        mkdir -p "${SPARK_WORKER_DIR:-/opt/spark-work}"
        require_spark_home
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
