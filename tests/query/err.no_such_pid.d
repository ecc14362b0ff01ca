/* A pid provider of a process the trace does not have. */
pid999:::entry
{
}
