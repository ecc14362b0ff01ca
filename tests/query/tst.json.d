/* args: --format json */
/* --format json: one document, each piece of output with the firing that
 * printed it, the aggregations printed at the end with no probe. */
#pragma D option quiet

pid$target::parse:entry
{
	printf("parse at %d\n", timestamp);
	@[probefunc] = count();
}
