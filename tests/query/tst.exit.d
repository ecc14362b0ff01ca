/* exit(3) stops firing at once; END fires; the status is exit's. */
#pragma D option quiet

pid$target::parse:entry
{
	printf("parse at %d\n", timestamp);
	exit(3);
}

pid$target::lex:entry
{
	printf("not reached\n");
}

END
{
	printf("END\n");
}
