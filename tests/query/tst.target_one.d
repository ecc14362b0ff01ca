/* trace: threads.txt */
/* pid$target naming functions only the first process called: nothing left
 * out, nothing said (the stderr file is empty). */
#pragma D option quiet

pid$target:a.out:work:entry
{
	@ = count();
}
