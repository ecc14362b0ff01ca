/* ustack() is the call path, symbolized; ustackdepth its depth. */
#pragma D option quiet

pid$target::leaf:entry
/ustackdepth == 5/
{
	printf("depth %d", ustackdepth);
	ustack();
	@[ustack()] = count();
}
