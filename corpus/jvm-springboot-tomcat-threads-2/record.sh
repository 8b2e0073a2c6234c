#!/usr/bin/env bash
# A Spring Boot web application (embedded Tomcat) whose request threads are
# capped at 2 (server.tomcat.threads.max=2) in front of a database call that
# waits 20 ms: requests queue for a worker while the CPUs idle. The fix is
# Tomcat's default of 200 threads (the Hikari pool of 10 then bounds it).
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/boot-items/boot.sh"
scenario_init
boot_items_pool_scenario tomcat --server.tomcat.threads.max=2 --server.tomcat.threads.max=200
