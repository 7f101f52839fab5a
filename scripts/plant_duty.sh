#!/bin/bash
# plant_duty.sh PREEMPT OUTDIR: runs `PREEMPT demo gimbal --duration 5s --out OUTDIR` and
# prints the plant process's duty cycle: its CPU time (/proc/PID/schedstat, field 1 = ns on
# a CPU) over 3 s of wall time, from 1.2 s to 4.2 s into the run, with `uptime` before and after
# (docs/PERFORMANCE.md, "The plant under the real-time throttle").
P=$1; OUT=$2
uptime
$P demo gimbal --duration 5s --out $OUT > $OUT.log 2>&1 &
DEMO=$!
sleep 1.2
PID=$(pgrep -P $DEMO -f "gimbal-plant" | head -1)
a=$(awk '{print $1}' /proc/$PID/schedstat); ta=$(date +%s%N)
sleep 3
b=$(awk '{print $1}' /proc/$PID/schedstat); tb=$(date +%s%N)
wait $DEMO
echo "plant pid $PID ($(cat /proc/$PID/comm 2>/dev/null)) duty cycle: $(echo "scale=2; 100*($b-$a)/($tb-$ta)" | bc) % (3 s, schedstat)"
uptime
