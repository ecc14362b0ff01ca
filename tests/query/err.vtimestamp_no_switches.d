/*
 * vtimestamp comes from the threads' context switches: over a trace
 * without them it is refused, with what to record.
 */
pid$target::work:entry
{
	trace(vtimestamp);
}
