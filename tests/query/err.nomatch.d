/* A description that matches no probe, in dtrace's words. */
pid$target:a.out:nosuch:entry
{
}
