#!/bin/sh
# Writes zoo.cfg and myid from the same environment variables as the Docker Hub `zookeeper`
# image (ZOO_MY_ID, ZOO_SERVERS="server.1=zk1:2888:3888;2181 server.2=..."), then runs
# QuorumPeerMain in the foreground: from Debian's jars (docker/zookeeper), or from a release's
# (docker/zookeeper-release, which copies this file).
set -eu

# The Docker Hub image's defaults (both images of docker/zookeeper and
# docker/zookeeper-release run this file; a container's environment overrides them).
: "${ZOO_CONF_DIR:=/conf}" "${ZOO_DATA_DIR:=/data}" "${ZOO_DATA_LOG_DIR:=/datalog}"
: "${ZOO_TICK_TIME:=2000}" "${ZOO_INIT_LIMIT:=5}" "${ZOO_SYNC_LIMIT:=2}"
: "${ZOO_MAX_CLIENT_CNXNS:=60}" "${ZOO_STANDALONE_ENABLED:=true}"
: "${ZOO_ADMINSERVER_ENABLED:=false}" "${ZOO_4LW_COMMANDS_WHITELIST:=*}"

CONFIG="$ZOO_CONF_DIR/zoo.cfg"
mkdir -p "$ZOO_CONF_DIR" "$ZOO_DATA_DIR" "$ZOO_DATA_LOG_DIR"
if [ ! -f "$CONFIG" ]; then
    {
        echo "dataDir=$ZOO_DATA_DIR"
        echo "dataLogDir=$ZOO_DATA_LOG_DIR"
        echo "tickTime=$ZOO_TICK_TIME"
        echo "initLimit=$ZOO_INIT_LIMIT"
        echo "syncLimit=$ZOO_SYNC_LIMIT"
        echo "maxClientCnxns=$ZOO_MAX_CLIENT_CNXNS"
        echo "standaloneEnabled=$ZOO_STANDALONE_ENABLED"
        echo "admin.enableServer=$ZOO_ADMINSERVER_ENABLED"
        echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"
        # Containers reach each other by name; listen on every address of the container.
        echo "quorumListenOnAllIPs=true"
        if [ -z "${ZOO_SERVERS:-}" ]; then
            echo "clientPort=2181"
        else
            for server in $ZOO_SERVERS; do
                echo "$server"
            done
        fi
    } > "$CONFIG"
fi
if [ ! -f "$ZOO_DATA_DIR/myid" ]; then
    echo "${ZOO_MY_ID:-1}" > "$ZOO_DATA_DIR/myid"
fi

if [ "$1" = "zkServer.sh" ]; then
    if [ -d /opt/zookeeper/lib ]; then
        # A release from Maven Central (docker/zookeeper-release): its jars, and conf/ with
        # the logback.xml that logs to the console.
        CLASSPATH="/opt/zookeeper/conf:/opt/zookeeper/lib/*"
    else
        # Debian's jar names its dependencies in its manifest (as
        # /etc/zookeeper/conf/environment); slf4j-log4j12 + log4j make the server log to the
        # console (slf4j's default is a no-op).
        J=/usr/share/java
        CLASSPATH="/etc/zookeeper/conf:$J/slf4j-log4j12.jar:$J/log4j-1.2.jar:$J/zookeeper.jar"
    fi
    exec java -Xmx256m -XX:+UseSerialGC \
        -Dzookeeper.log.dir=/tmp -Dzookeeper.root.logger=INFO,CONSOLE \
        -cp "$CLASSPATH" org.apache.zookeeper.server.quorum.QuorumPeerMain "$CONFIG"
fi
exec "$@"
