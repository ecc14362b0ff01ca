/*
 * An 'l' or 'll' suffix makes a constant long (64 bits), however small, as
 * in C and D: 1LL << 62 is 2^62 (it was 0, the shift done in an int). A
 * constant with no suffix that fits an int stays an int: 1 << 40 wraps.
 */
#pragma D option quiet

BEGIN
{
	printf("%d\n", 1LL << 62);
	printf("%d\n", 1L << 40);
	printf("%d\n", 1ll << 33);
	printf("%d\n", 0x7fffffffLL + 1);
	printf("%d\n", 1 << 40);
	x = 3LL;
	printf("%d\n", x << 61 >> 61);
	exit(0);
}
