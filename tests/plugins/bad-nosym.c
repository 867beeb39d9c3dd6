/* A shared object that is not a policy: no skipper_policy_init. */
int skipper_not_a_policy(void);
int skipper_not_a_policy(void)
{
	return 42;
}
