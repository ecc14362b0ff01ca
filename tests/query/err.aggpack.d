/*
 * aggpack (and agghist) would print the aggregations in another layout:
 * refused, not ignored, so that no one reads the default layout as it.
 */
#pragma D option aggpack
BEGIN
{
	exit(0);
}
