/* trace: kernel.txt */
/*
 * The sched provider over a recording: on-cpu, and before off-cpu, sleep
 * (the thread blocks) or preempt (it is still runnable), with the CPU;
 * wakeup fires in the waker, arg0 and arg1 the woken thread and process.
 * A waker outside the trace has its pid and tid, no execname.  The
 * thread's time on the CPU from on-cpu to off-cpu, as the Dynamic Tracing
 * Guide's first sched example measures it.
 */
#pragma D option quiet

sched:::on-cpu, sched:::off-cpu, sched:::sleep, sched:::preempt
{
	printf("%d %d %s:%s cpu %d\n", timestamp, tid, probemod, probename, cpu);
}

sched:::wakeup
{
	printf("%d %d \"%s\" (pid %d) woke %d (pid %d)\n", timestamp, tid, execname, pid, arg0, arg1);
}

sched:::on-cpu
{
	self->ts = timestamp;
}

sched:::off-cpu
/self->ts/
{
	@oncpu[tid] = sum(timestamp - self->ts);
	self->ts = 0;
}
