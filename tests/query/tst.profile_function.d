/* trace: kernel_profile.txt */
/*
 * profile-N's arg1 is the innermost function under way in the thread (its
 * entry): ufunc(arg1) names the function that ran, the top idiom of
 * dtrace's profile provider; arg0 (the kernel's instruction) is 0.
 */
#pragma D option quiet

profile-1ms
{
	@[ufunc(arg1), arg0] = count();
}
