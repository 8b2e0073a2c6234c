# Shared by the scenarios on the boot-items application: source after
# ../../lib.sh. Builds the application with Maven and starts its database.
BOOT_ITEMS_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# boot_items_jar WORK [jetty]: builds the application in WORK/boot-items (a
# copy of the source, so the checkout stays clean) and prints the jar's
# path; with "jetty", on Jetty instead of Tomcat (pom-jetty.xml).
boot_items_jar() {
	local build="$1/boot-items" pom=pom.xml jar=boot-items.jar
	if [ "${2:-}" = jetty ]; then
		build="$1/boot-items-jetty" pom=pom-jetty.xml jar=boot-items-jetty.jar
	fi
	mkdir -p "$build"
	cp -r "$BOOT_ITEMS_SRC/$pom" "$BOOT_ITEMS_SRC/src" "$build/"
	mvn -q -B -f "$build/$pom" package -DskipTests >&2
	echo "$build/target/$jar"
}

# boot_items_db WORK PORT DELAY_MS: a PostgreSQL cluster on PORT holding the
# items table (10,000 rows, primary key) and find_item(id), a function
# that takes DELAY_MS before it answers: a slow query or a remote
# database's round trip, spent waiting, not on this machine's CPUs.
boot_items_db() {
	local work=$1 port=$2 delay=$3
	pg_start "$work/pgdata" "$port"
	psql_run "$port" postgres -c "drop database if exists items" -c "create database items"
	psql_run "$port" items <<SQL
create table items (id bigint primary key, name text not null, price numeric(10,2) not null);
insert into items select i, 'item ' || i, (i % 1000) / 10.0 from generate_series(1, 10000) i;
create function find_item(bigint) returns setof items language sql as \$\$
  select pg_sleep($delay / 1000.0);
  select * from items where id = \$1;
\$\$;
SQL
}

# boot_items_start JAR JAVA_HOME PORT DBPORT LOG [--setting=value...]: the
# application on 127.0.0.1:PORT, its output in LOG; BG_PID is the JVM.
boot_items_start() {
	local jar=$1 java=$2 port=$3 dbport=$4 log=$5
	shift 5
	bg "$java/bin/java" -Xms512m -Xmx512m -jar "$jar" \
		--server.address=127.0.0.1 --server.port="$port" \
		--spring.datasource.url="jdbc:postgresql://127.0.0.1:$dbport/items" \
		--spring.datasource.username=postgres "$@" >"$log" 2>&1
	wait_port "$port" 120
}

# boot_items_pool_scenario FLAVOR BAD_SETTING FIX_SETTING: a scenario whose
# cause is a pool's size: the application (FLAVOR: tomcat or jetty) in front
# of find_item's 20 ms wait, started with BAD_SETTING and with FIX_SETTING,
# measured under 32 connections (measure_http). After scenario_init.
boot_items_pool_scenario() {
	local flavor=$1 bad_setting=$2 fix_setting=$3 java jar db bad fix bad_pid
	java=$(jdk_home 17)
	jar=$(boot_items_jar "$W" "$flavor")
	db=$(free_port)
	boot_items_db "$W" "$db" 20
	bad=$(free_port)
	boot_items_start "$jar" "$java" "$bad" "$db" "$W/bad.log" "$bad_setting"
	bad_pid=$BG_PID
	fix=$(free_port)
	boot_items_start "$jar" "$java" "$fix" "$db" "$W/fixed.log" "$fix_setting"
	measure_http "$bad_pid" "$BG_PID" "http://127.0.0.1:$bad/items/5" "http://127.0.0.1:$fix/items/5" 10 -c 32
}
