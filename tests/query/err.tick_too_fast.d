/* dtrace's profile provider makes no probe below 200 us. */
tick-100us
{
}
