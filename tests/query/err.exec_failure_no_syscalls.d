/*
 * A failed exec is seen in the system calls alone: over a trace without
 * them proc:::exec-failure is refused, with what to record -- an empty
 * answer would read as "every exec succeeded".
 */
proc:::exec-failure
{
	trace(arg0);
}
