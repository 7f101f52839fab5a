// rt_stop_probe CPU SECONDS [PRIO]: a SCHED_FIFO thread pinned to CPU spins for SECONDS and
// prints every gap of more than 1 ms in its own clock reads (time it did not run): the ~50 ms
// stops of the real-time class by RT throttling or the fair server (docs/MEASURING.md, "Which
// mechanism stops a busy real-time thread"). Build: gcc -O2 -o rt_stop_probe rt_stop_probe.c
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static long long now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
int main(int argc,char**argv){
  int cpu=atoi(argv[1]); double secs=atof(argv[2]); int prio=argc>3?atoi(argv[3]):50;
  cpu_set_t s;CPU_ZERO(&s);CPU_SET(cpu,&s);
  if(sched_setaffinity(0,sizeof s,&s)){perror("affinity");return 1;}
  struct sched_param p={.sched_priority=prio};
  if(prio>0&&sched_setscheduler(0,SCHED_FIFO,&p)){perror("fifo");return 1;}
  long long t0=now(),last=t0,end=t0+(long long)(secs*1e9),gaps=0,gapns=0;
  while(1){long long t=now(); if(t-last>1000000){printf("gap at %.3f s: %.2f ms\n",(last-t0)/1e9,(t-last)/1e6);gaps++;gapns+=t-last;} last=t; if(t>end)break;}
  printf("cpu %d prio %d: %lld gaps > 1 ms, %.1f ms total in %.1f s\n",cpu,prio,gaps,gapns/1e6,secs);
  return 0;}
