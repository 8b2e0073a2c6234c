#!/usr/bin/env bash
# The boot-items application on Jetty (spring-boot-starter-jetty) whose
# QueuedThreadPool is capped at 8 threads (server.jetty.threads.max=8; one
# acceptor and one selector among them) in front of a database call that
# waits 20 ms: requests queue for a thread while the CPUs idle. The fix is
# Jetty's default of 200 threads (the Hikari pool of 10 then bounds it).
source "$(dirname "$0")/../lib.sh"
source "$CORPUS/jvm-apps/boot-items/boot.sh"
scenario_init
boot_items_pool_scenario jetty --server.jetty.threads.max=8 --server.jetty.threads.max=200
