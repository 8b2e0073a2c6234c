#!/usr/bin/env bash
# H2's TCP server holding a users table of 100,000 rows whose email column
# has no index, queried by email (a login or lookup path): every query scans
# the table. The fix is CREATE INDEX on users(email).
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/loaders/loaders.sh"
scenario_init
JAVA=$(jdk_home 17)
H2=$(mvn_fetch com.h2database:h2:2.5.252 "$W/dl")
CP=$(loaders_cp "$W")
ROWS=100000

start_h2() { # PORT DIR LOG
	rm -rf "$2"
	mkdir -p "$2"
	bg "$JAVA/bin/java" -Xms512m -Xmx512m -cp "$H2" org.h2.tools.Server -tcp -tcpPort "$1" -baseDir "$2" -ifNotExists >"$3" 2>&1
	wait_port "$1"
}
BAD=$(free_port)
start_h2 "$BAD" "$W/h2-bad" "$W/bad.log"
BAD_PID=$BG_PID
FIX=$(free_port)
start_h2 "$FIX" "$W/h2-fixed" "$W/fixed.log"
FIX_PID=$BG_PID
for p in "$BAD" "$FIX"; do
	"$JAVA/bin/java" -cp "$CP" corpus.load.Jdbc users --url "jdbc:h2:tcp://127.0.0.1:$p/users" --rows "$ROWS"
done
"$JAVA/bin/java" -cp "$H2" org.h2.tools.Shell -url "jdbc:h2:tcp://127.0.0.1:$FIX/users" -user sa -password '' \
	-sql "create index users_email on users(email)"

# The load: 8 JDBC connections (kept by the load agent between runs), each
# looking up random users by email; a run is 1,000 lookups.
loaders_agent "$JAVA" "$CP" "$W/agent.log"
LOAD="curl -fsS 'http://127.0.0.1:$AGENT_PORT/jdbc-lookup?url=jdbc:h2:tcp://{host}:{port}/users&rows=$ROWS&clients=8&units=1000'"
jvm_record_cmd "$BAD_PID" "$BAD" "$HERE/bad" 20 1000 lookup "$LOAD"
pd_verify_cmd "$BAD" "$FIX" "$HERE" 1000 lookup "$LOAD" -d 15s --rounds 6 --warmup 2s
set_measured "$HERE" throughput
