package io.locksmith.jdbc.internal;

import com.zaxxer.hikari.SQLExceptionOverride;
import java.sql.SQLException;

/**
 * Tells HikariCP to evict connections that H2 reports closed or broken (its error codes are not SQL state class
 * 08, which is all HikariCP recognises), so a killed session is not handed out again. Not part of the API.
 */
public final class BrokenConnectionOverride implements SQLExceptionOverride {

    /** H2's OBJECT_CLOSED, CONNECTION_BROKEN_1, DATABASE_IS_CLOSED and DATABASE_CALLED_AT_SHUTDOWN. */
    private static final int[] H2_BROKEN = {90007, 90067, 90098, 90121};

    /** Created by HikariCP from its class name. */
    public BrokenConnectionOverride() {
    }

    @java.lang.Override
    public Override adjudicate(SQLException e) {
        for (SQLException s = e; s != null; s = s.getNextException()) {
            for (int code : H2_BROKEN) {
                if (s.getErrorCode() == code) {
                    return Override.MUST_EVICT;
                }
            }
            if (s.getNextException() == s) {
                break;
            }
        }
        return Override.CONTINUE_EVICT;
    }
}
