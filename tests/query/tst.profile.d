/* trace: clock.txt */
/* profile-5hz samples each running thread: what it was doing, every 200 ms
 * (at 0.6 s, 1.6 s and 2.6 s inside work). */
#pragma D option quiet

profile-5hz
{
	@[ustackdepth] = count();
}

END
{
	printa("depth %d: %@d samples\n", @);
}
