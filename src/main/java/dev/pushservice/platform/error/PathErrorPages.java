package dev.pushservice.platform.error;

import org.springframework.web.servlet.ModelAndView;

/**
 * A part of the program that answers errors reaching {@code /error} (raised outside its handlers:
 * while a view renders, in a filter) for its own paths in its own shape. The dashboard's pages get
 * an HTML page, not the API's JSON error ({@link FallbackErrorController}).
 */
public interface PathErrorPages {

    /**
     * @param path the failed request's path, without the context path
     * @param status the status the error is answered with
     * @return the page, or null when {@code path} is not this part's
     */
    ModelAndView page(String path, int status);
}
