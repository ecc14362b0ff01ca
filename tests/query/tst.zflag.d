/* args: -Z */
/* -Z: a description that matches nothing is no error. */
#pragma D option quiet

pid$target::nosuch:entry
{
	printf("never\n");
}

END
{
	printf("done\n");
}
