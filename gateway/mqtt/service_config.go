package main

import (
	"fmt"
	"os"
	"strings"
)

// validateService checks the service connection's fields (retained
// messages): none set = retained messages are forwarded but not kept;
// otherwise all four are required. The password file must not be readable
// by others (the role writes it 0640) and holds the password on its first
// line; the password itself never appears in an error or a log line.
func (c *Config) validateService() error {
	set := len(c.ServiceRouters) > 0 || c.ServiceUser != "" || c.ServicePasswordFile != "" || c.RetainedAddress != ""
	if !set {
		return nil
	}
	if len(c.ServiceRouters) == 0 {
		return fmt.Errorf("service_routers: is required with service_user/service_password_file/retained_address: a list of host:port of the routers' gateway service listener")
	}
	for i, r := range c.ServiceRouters {
		if err := hostPort(fmt.Sprintf("service_routers[%d]", i), r); err != nil {
			return err
		}
	}
	if c.ServiceUser == "" {
		return fmt.Errorf("service_user: is required with service_routers (the space's gateway service user)")
	}
	if c.ServicePasswordFile == "" {
		return fmt.Errorf("service_password_file: is required with service_routers")
	}
	st, err := os.Stat(c.ServicePasswordFile)
	if err != nil {
		return fmt.Errorf("service_password_file: %v", err)
	}
	if st.Mode().Perm()&0o007 != 0 {
		return fmt.Errorf("service_password_file: %q has mode %04o: others must have no access (0640 or tighter)", c.ServicePasswordFile, st.Mode().Perm())
	}
	data, err := os.ReadFile(c.ServicePasswordFile)
	if err != nil {
		return fmt.Errorf("service_password_file: %v", err)
	}
	c.servicePassword = strings.TrimRight(strings.SplitN(string(data), "\n", 2)[0], "\r")
	if c.servicePassword == "" {
		return fmt.Errorf("service_password_file: %q: the first line (the password) is empty", c.ServicePasswordFile)
	}
	if c.RetainedAddress == "" {
		return fmt.Errorf("retained_address: is required with service_routers (e.g. \"$mqtt/%s/retained\")", c.Space)
	}
	if !strings.HasPrefix(c.RetainedAddress, "$mqtt/") {
		return fmt.Errorf("retained_address: %q must start with \"$mqtt/\" (the gateway's own names, which no client can reach)", c.RetainedAddress)
	}
	return nil
}
