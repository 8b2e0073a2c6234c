#!/usr/bin/env bash
# Debian's MariaDB 10.11 with innodb_buffer_pool_size at its minimum (6M
# with 16 KiB pages; 5M is refused), the size a copied small-instance my.cnf
# or a container's memory cut leaves, under a table of 1,500,000 rows (about
# 345 MB with its index), read by sysbench's point selects on uniformly
# random primary keys from 8 connections: almost every lookup's leaf page
# has been evicted and is read again. The fix measured: a buffer pool that
# holds the table (innodb_buffer_pool_size=1G). Both servers run on copies
# of one data directory, loaded once.
source "$(dirname "$0")/../lib.sh"
apt_need mariadb-server sysbench
scenario_init

ROWS=1500000
# mariadb_conf NAME PORT POOL: the [mariadbd] options of one server on the
# data directory $W/NAME/data.
mariadb_conf() {
	mkdir -p "$W/$1"
	printf '[mariadbd]\ndatadir=%s/data\nsocket=%s/sock\nport=%s\nbind-address=127.0.0.1\nuser=root\n' "$W/$1" "$W/$1" "$2" >"$W/$1/my.cnf"
	printf 'pid-file=%s/pid\nlog-error=%s/error.log\ninnodb_buffer_pool_size=%s\n' "$W/$1" "$W/$1" "$3" >>"$W/$1/my.cnf"
}
sql() {
	local port=$1
	shift
	mariadb -h 127.0.0.1 -P "$port" -u root "$@"
}

BAD=$(free_port)
FIX=$(free_port)
# The table, loaded once into the fixed server (sysbench's sbtest schema,
# filled by the server itself from the sequence engine), then copied.
mariadb_start "$FIX" "$W/fix" innodb_buffer_pool_size=1G
sql "$FIX" -e "
CREATE DATABASE sbtest;
USE sbtest;
CREATE TABLE sbtest.sbtest1 (id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL,
  c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE=InnoDB;
INSERT INTO sbtest.sbtest1 (id, k, c, pad) SELECT seq, FLOOR(1 + RAND(seq) * $ROWS),
  LEFT(CONCAT(MD5(seq), '-', MD5(seq + 1), '-', MD5(seq + 2), '-', MD5(seq + 3)), 119),
  LEFT(CONCAT(MD5(seq + 4), '-', MD5(seq + 5)), 59) FROM seq_1_to_$ROWS;
CREATE INDEX k_1 ON sbtest.sbtest1 (k);
ANALYZE TABLE sbtest.sbtest1;" >/dev/null
sql "$FIX" -e "SELECT table_rows, ROUND(data_length / 1048576) AS data_mb, ROUND(index_length / 1048576) AS index_mb
  FROM information_schema.tables WHERE table_schema = 'sbtest'" >&2
sql "$FIX" -e 'SET GLOBAL innodb_buffer_pool_dump_at_shutdown = OFF'
stop_bg "$BG_PID"
rm -rf "$W/bad"
mariadb_conf bad "$BAD" 6M
cp -a "$W/fix/data" "$W/bad/data"
mariadb_conf fix "$FIX" 1G
bg mariadbd --defaults-file="$W/bad/my.cnf"
BAD_PID=$BG_PID
bg mariadbd --defaults-file="$W/fix/my.cnf"
wait_port "$BAD" 120
wait_port "$FIX" 120
for p in "$BAD" "$FIX"; do
	sql "$p" -e "SELECT @@innodb_buffer_pool_size, @@innodb_flush_method, @@innodb_page_size" >&2
	# both read the whole table once (the fixed one keeps it)
	sql "$p" -e 'SELECT COUNT(*), SUM(LENGTH(c)) FROM sbtest.sbtest1' >/dev/null
done

# One run: 8 connections, N point selects on uniformly random ids, N sized
# from a 3 s probe of each side so a bad run lasts about 4 s (verify's
# rounds repeat whole runs); the probes' rates go to stderr.
SB="sysbench --db-driver=mysql --mysql-host=127.0.0.1 --mysql-user=root --mysql-db=sbtest --tables=1 --table-size=$ROWS --rand-type=uniform --threads=8"
for p in "$FIX" "$BAD"; do
	rate=$($SB --mysql-port="$p" --time=3 oltp_point_select run | awk '/transactions:/ {gsub(/[(]/, "", $3); print int($3)}')
	echo "probe: port $p, $rate point selects/s" >&2
done
N=$(( (rate * 4 / 1000 + 1) * 1000 ))
echo "one run: $N point selects" >&2
LOAD="sysbench --db-driver=mysql --mysql-host={host} --mysql-port={port} --mysql-user=root --mysql-db=sbtest --tables=1 --table-size=$ROWS --rand-type=uniform --threads=8 --events=$N --time=0 oltp_point_select run"

# after_record: one more bad run with the server's and the kernel's counters
# around it (buffer pool misses, the disk's reads, the page cache), kept for
# the scenario's notes in $W/bad-counters.txt.
counters() {
	sql "$BAD" -N -e "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_reads', 'Innodb_buffer_pool_read_requests', 'Innodb_data_reads', 'Innodb_data_read', 'Innodb_pages_read', 'Innodb_buffer_pool_pages_total')"
	grep -E ' (vda|sda|nvme0n1) ' /proc/diskstats || true
	grep -E '^(pgpgin|pgmajfault) ' /proc/vmstat
	grep -E '^(Cached|MemFree):' /proc/meminfo
}
after_record() {
	local run=${LOAD//\{host\}/127.0.0.1}
	run=${run//\{port\}/$BAD}
	{
		echo "== before one run of $N point selects on the bad server"
		counters
		date +%s.%N
		$run | grep -E 'queries:|transactions:|avg:|95th'
		date +%s.%N
		echo "== after"
		counters
	} >"$W/bad-counters.txt" 2>&1
	cat "$W/bad-counters.txt" >&2
}
measure_cmd "$BAD_PID" "$BAD" "$FIX" "$HERE" "$N" select "$LOAD" 20 10
